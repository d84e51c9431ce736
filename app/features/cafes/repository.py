from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.upsert import upsert
from app.features.cafes.models import Cafe, CafeText, City, CityAlias, CityName


class CafeRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def city_by_alias(self, alias: str) -> City | None:
        return self.session.scalar(select(City).join(CityAlias, CityAlias.city_key == City.key)
                                   .where(CityAlias.alias == alias))

    def city(self, key: str) -> City | None:
        return self.session.get(City, key)

    def city_name(self, city: City, language: str) -> str:
        """The city's name in ``language``, or its English name."""
        localized = self.session.get(CityName, (city.key, language))
        return localized.name if localized is not None else city.name

    def city_names(self, language: str) -> list[str]:
        """Every city with cafés, named in ``language`` (else in English), in alphabetical order."""
        localized = dict(self.session.execute(
            select(CityName.city_key, CityName.name).where(CityName.language == language)).all())
        cities = self.session.scalars(select(City).where(City.key.in_(select(Cafe.city_key))))
        return sorted(localized.get(c.key, c.name) for c in cities)

    def cafes_in(self, city_key: str, limit: int) -> list[Cafe]:
        return list(self.session.scalars(select(Cafe).where(Cafe.city_key == city_key)
                                         .order_by(Cafe.since.is_(None), Cafe.since, Cafe.name).limit(limit)))

    def specialties(self, cafe_ids: list[str], language: str) -> dict[str, str]:
        """The descriptions of these cafés in ``language``, where one is kept, by café id."""
        return dict(self.session.execute(
            select(CafeText.cafe_id, CafeText.specialty)
            .where(CafeText.cafe_id.in_(cafe_ids), CafeText.language == language)).all())

    def save_all(self, cities: list[dict], aliases: list[dict], names: list[dict],
                 cafes: list[dict], texts: Sequence[dict] = ()) -> None:
        upsert(self.session, City.__table__, cities, key=("key",))
        upsert(self.session, CityAlias.__table__, aliases, key=("alias",))
        upsert(self.session, CityName.__table__, names, key=("city_key", "language"))
        upsert(self.session, Cafe.__table__, cafes)
        upsert(self.session, CafeText.__table__, list(texts), key=("cafe_id", "language"))
